package loads

// SetSmallArm changes the arm size under which text is filtered by reading
// rows, and returns the function that restores it.
func SetSmallArm(n int) (restore func()) {
	old := smallArm
	smallArm = n
	return func() { smallArm = old }
}
