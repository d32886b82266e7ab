-- green's schema as create_all made it before migrations (captured from main, postgresql)
CREATE TYPE taskstatus AS ENUM ('queued', 'preparing', 'running', 'evaluating', 'completed', 'failed', 'cancelled');

CREATE TYPE failurekind AS ENUM ('infra', 'agent');

CREATE TABLE task_contexts (
	kind VARCHAR NOT NULL, 
	arvo_id VARCHAR NOT NULL, 
	status taskstatus NOT NULL, 
	purple_url VARCHAR NOT NULL, 
	container_name VARCHAR, 
	workspace_dir VARCHAR, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	started_at TIMESTAMP WITH TIME ZONE, 
	updated_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	finished_at TIMESTAMP WITH TIME ZONE, 
	max_steps INTEGER NOT NULL, 
	task_timeout_s FLOAT NOT NULL, 
	command_timeout_s FLOAT NOT NULL, 
	steps INTEGER NOT NULL, 
	tokens_in INTEGER NOT NULL, 
	tokens_out INTEGER NOT NULL, 
	cost FLOAT NOT NULL, 
	submissions INTEGER NOT NULL, 
	end_reason VARCHAR, 
	error VARCHAR, 
	failure_kind failurekind, 
	assessment_id VARCHAR, 
	owner VARCHAR NOT NULL, 
	id VARCHAR NOT NULL, 
	submission JSON, 
	scores JSON, 
	ground_truth JSON, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_task_contexts_kind ON task_contexts (kind);

CREATE INDEX ix_task_contexts_status ON task_contexts (status);

CREATE INDEX ix_task_contexts_arvo_id ON task_contexts (arvo_id);

CREATE INDEX ix_task_contexts_owner ON task_contexts (owner);

CREATE INDEX ix_task_contexts_assessment_id ON task_contexts (assessment_id);

CREATE TABLE assessments (
	id VARCHAR NOT NULL, 
	purple_url VARCHAR NOT NULL, 
	owner VARCHAR NOT NULL, 
	status taskstatus NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	finished_at TIMESTAMP WITH TIME ZONE, 
	request JSON, 
	result JSON, 
	error VARCHAR, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_assessments_owner ON assessments (owner);

CREATE TABLE task_verifications (
	kind VARCHAR NOT NULL, 
	ref VARCHAR NOT NULL, 
	image_digest VARCHAR NOT NULL, 
	image VARCHAR NOT NULL, 
	verified BOOLEAN NOT NULL, 
	reason VARCHAR, 
	steps JSON, 
	seconds FLOAT NOT NULL, 
	checked_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (kind, ref, image_digest)
);

CREATE TABLE image_uses (
	image VARCHAR NOT NULL, 
	last_used TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (image)
);

CREATE TABLE commands (
	id SERIAL NOT NULL, 
	task_id VARCHAR NOT NULL, 
	seq INTEGER NOT NULL, 
	command VARCHAR NOT NULL, 
	exit_code INTEGER NOT NULL, 
	duration_s FLOAT NOT NULL, 
	timed_out BOOLEAN NOT NULL, 
	truncated BOOLEAN NOT NULL, 
	output VARCHAR NOT NULL, 
	created_at TIMESTAMP WITH TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(task_id) REFERENCES task_contexts (id)
);

CREATE INDEX ix_commands_task_id ON commands (task_id);

