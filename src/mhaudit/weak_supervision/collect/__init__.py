"""Collection of Bluesky posts: the Jetstream / firehose stream clients, the lexicon filter and the post store."""
