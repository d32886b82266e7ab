"""Green's REST API: the routes and their dependencies."""
