package strategies

// BreakDetector makes the detector ignore changes to the tables ignore
// returns true for (nil restores it). Tests use it to prove that the
// property test fails when detection misses something.
func BreakDetector(ignore func(table string) bool) { brokenDetector = ignore }
