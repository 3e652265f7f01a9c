package strategies

// BreakDetector makes the detector ignore changes to the tables ignore
// returns true for (nil restores it). Tests use it to prove that the
// property test fails when detection misses something.
func BreakDetector(ignore func(table string) bool) { brokenDetector = ignore }

// BreakSchemaWatch makes resets that watch a database's directory, or
// read its schema changes from the binary log, ignore what they see there
// (false restores it), to prove that the property test fails when schema
// changes are missed.
func BreakSchemaWatch(broken bool) { brokenSchemaWatch = broken }

// BreakDelta makes the delta restore of big tables trust their row count
// alone (false restores it), to prove that the property test fails when a
// delta restore is taken for a table the test did more than append to.
func BreakDelta(broken bool) { brokenDelta = broken }

// BreakXA makes resets leave prepared XA transactions alone (false
// restores it), to prove that the property test fails when a test's
// prepared XA transaction outlives the reset.
func BreakXA(broken bool) { brokenXA = broken }

// BreakUpdateTime makes resets take a table whose UPDATE_TIME is the
// baseline's own second, or the one before, for one nothing was committed
// to (false restores it), to prove that the property test fails when the
// one-second resolution is ignored.
func BreakUpdateTime(broken bool) { brokenUpdateTime = broken }

// BreakFulltext makes resets on MySQL leave a FULLTEXT table alone whatever
// its row count.
func BreakFulltext(broken bool) { brokenFulltext = broken }

// UncommittedTables is how many tables resets have found rolled back by
// their UPDATE_TIME so far (see uncommitted).
func UncommittedTables() int64 { return uncommittedTables.Load() }

// BreakRowKeys makes delta restores by the binary log leave out one key
// of every table's (false restores it), to prove that the property test
// fails when a row the test changed is not put back.
func BreakRowKeys(broken bool) { brokenRowKeys = broken }

// AfterRestore sets what runs between a restore and the reading of the
// restored tables' states (nil: nothing).
func AfterRestore(fn func()) { afterRestore = fn }

// LowerSampling is c.lowerSampling, a restore's leave to lower the
// server's statistics sampling.
func LowerSampling(c *DDLCounter) (release func(), ok bool) { return c.lowerSampling() }
