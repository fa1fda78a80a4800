//go:build !sandboxtest

package main

// startDelay does nothing in the shipped helper; see startdelay_sandboxtest.go.
func startDelay() {}
