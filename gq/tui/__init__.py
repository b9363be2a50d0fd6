"""`gq top`: a Textual app that renders snapshots it is given; it never imports the daemon."""
