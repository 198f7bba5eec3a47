// Package readme holds the Go code the README shows, as runnable examples:
// TestREADMEQuotesExamples fails when a Go block of the README is not found,
// line for line, in this package's examples or in httpzerodial's (a module
// of its own, whose example file the test reads as text), so every snippet
// there compiles and runs.
package readme
