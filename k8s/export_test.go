package k8s

// WebSocketOnly makes e's execs go over WebSocket, as after the API server
// refused SPDY.
func WebSocketOnly(e *Engine) { e.noSPDY.Store(true) }

// SPDYRefused reports whether e keeps to WebSocket.
func SPDYRefused(e *Engine) bool { return e.noSPDY.Load() }
