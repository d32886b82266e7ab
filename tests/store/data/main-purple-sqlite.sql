-- purple's schema as create_all made it before migrations (captured from main, sqlite)
CREATE TABLE task_contexts (
	a2a_task_id VARCHAR, 
	green_url VARCHAR NOT NULL, 
	policy VARCHAR NOT NULL, 
	status VARCHAR NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	finished_at DATETIME, 
	step_count INTEGER NOT NULL, 
	command_count INTEGER NOT NULL, 
	tokens_in INTEGER NOT NULL, 
	tokens_out INTEGER NOT NULL, 
	cost FLOAT NOT NULL, 
	reason VARCHAR, 
	trajectory_path VARCHAR, 
	id VARCHAR NOT NULL, 
	messages JSON, 
	submission JSON, 
	PRIMARY KEY (id)
);

CREATE TABLE commands (
	id INTEGER NOT NULL, 
	task_id VARCHAR NOT NULL, 
	seq INTEGER NOT NULL, 
	command VARCHAR NOT NULL, 
	exit_code INTEGER NOT NULL, 
	duration_s FLOAT NOT NULL, 
	timed_out BOOLEAN NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(task_id) REFERENCES task_contexts (id)
);

CREATE INDEX ix_commands_task_id ON commands (task_id);

