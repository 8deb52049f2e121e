"""The workflow editor: its page, the htmx panels around the canvas island, the one edit endpoint, the run
drawer and "try this node"."""
