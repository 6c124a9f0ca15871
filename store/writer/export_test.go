package writer

// SetBlockRows sets the rows per block of s's event INSERTs.
func SetBlockRows(s *Sink, n int) { s.blockRows = n }
