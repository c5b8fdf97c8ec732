"""What reads the selected tables, found before cutover (issue 58): Glue jobs and crawlers, Athena
named queries and prepared statements, Step Functions definitions, Lambda environments and code
files under S3 prefixes, each scanned for a selected table's name or S3 location. Read only:
icelake never edits a consumer. scan.py runs it; rewire.json is model.Rewire."""
