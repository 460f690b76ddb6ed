"""Weak supervision of Bluesky posts: collection from the AT Protocol stream (collect, lexicons), weak labelers
(LLM, lexicon), the annotation app for two human annotators, and the sheets they exchange."""
