package taskiter

// Duplicates is how many records of a group already reported in the same pass the reader dropped
// (onceEach), over all of its passes: the tests' check that the program writes each group once a pass.
func Duplicates(it *Iter) int { return it.duplicates }

// OpenCodedWithRoom loads PassOpenCoded with room for n records a pass instead of 65,536.
func OpenCodedWithRoom(n uint32) (*Iter, error) { return loadOpenCodedRoom(n) }
