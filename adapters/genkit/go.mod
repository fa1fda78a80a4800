module github.com/dockersandbox/sandbox/adapters/genkit

go 1.26.8

replace github.com/dockersandbox/sandbox => ../..

require github.com/firebase/genkit/go v1.4.0 // indirect
