// Package readme holds the Go code the README and the pages of docs/ show,
// as runnable examples: TestDocsQuoteExamples fails when a Go block of the
// README or of a docs/*.md page is not found, line for line, in this
// package's examples, in the quickstart's program (examples/quickstart) or
// in httpzerodial's examples (a module of its own, whose example file the
// test reads as text), so every snippet there compiles and runs.
package readme
