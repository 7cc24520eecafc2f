"""The package's version."""

VERSION = "0.1.0"
