// Package otel_test tests the library's OpenTelemetry spans with the
// SDK's in-memory exporter, in a module of its own so that the core
// module depends on the OpenTelemetry API only, never on the SDK.
package otel_test
