"""icelake: move Apache Iceberg tables between AWS accounts with their whole history."""

__version__ = "0.1.0"
