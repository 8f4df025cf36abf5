"""Reading files into the store: format detection, parsing, validation, linking, one transaction per file."""
