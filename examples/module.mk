# examples/: programs a user copies.
