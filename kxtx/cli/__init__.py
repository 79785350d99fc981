"""The command-line layer: parses options, calls library modules, renders what they return."""
