package etcdzerodial

// SetTestHookRead sets a function that a Resolver's Watch calls after each
// successful read, before it watches from the read's revision, and returns
// a function that removes it. Tests that set it do not run in parallel.
func SetTestHookRead(f func()) (restore func()) {
	testHookRead = f
	return func() { testHookRead = nil }
}
