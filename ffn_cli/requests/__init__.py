"""What a command is asked, read from its options once: the comma lists, the GPU named, each
checked with one clear error. Pure Python, below the services that answer it."""
