"""AWS access: sessions and cross-account roles, file I/O on S3 and local disks."""
