"""Infrastructure only: the CDK stacks and constructs of icelake. Never imported by runtime code."""
