package serve

// SetShards sets how many shards s's all-pipelines lists fold and
// diagnose in (fold.go): 1 is one Set of every pipeline.
func SetShards(s *Server, n int) { s.shards = n }
