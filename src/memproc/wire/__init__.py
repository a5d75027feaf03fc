"""What travels on the wire: the envelope, the params and result of every method, the messages
the server sends unasked. Pure types: this package imports nothing else of memproc, so a
client, a schema generator or any layer can use it without pulling in the server."""
