//go:build !race

package main

// raceDetector is set when the tests run with -race, which slows the
// transpiled SQLite engine about tenfold.
const raceDetector = false
