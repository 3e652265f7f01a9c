package server

// UploadBytes returns the bytes of large requests the API holds now and the
// most it held at once.
func (s *API) UploadBytes() (held, peak int64) {
	return s.budget.held.Load(), s.budget.peak.Load()
}
