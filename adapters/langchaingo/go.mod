module github.com/dockersandbox/sandbox/adapters/langchaingo

go 1.26.8

replace github.com/dockersandbox/sandbox => ../..

require github.com/tmc/langchaingo v0.1.14 // indirect
