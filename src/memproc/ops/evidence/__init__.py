"""`evidence.*`: immutable records, their canonical payload and hash, the references they rest
on (memories, other evidence, files in the project) and the state computed from them on read."""
