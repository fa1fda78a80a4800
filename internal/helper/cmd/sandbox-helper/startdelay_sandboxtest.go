//go:build sandboxtest

package main

import (
	"os"
	"time"
)

// startDelayEnv, set in a sandbox's environment, delays PID 1 by that long
// before it catches its signals: the tests stand in for a slow start with
// it (a stop in that window must still end the helper cleanly). Only a
// helper built with the sandboxtest tag reads it (the tests install one
// with New; see integration/lifecycle_stop_test.go); the shipped helper reads no test variable.
const startDelayEnv = "DOCKERSANDBOX_TEST_HELPER_DELAY"

// startDelay sleeps for startDelayEnv's duration, at most a minute.
func startDelay() {
	if d, err := time.ParseDuration(os.Getenv(startDelayEnv)); err == nil && d > 0 && d <= time.Minute {
		time.Sleep(d)
	}
}
