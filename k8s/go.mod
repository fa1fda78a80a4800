module github.com/dockersandbox/sandbox/k8s

go 1.26.8

require github.com/dockersandbox/sandbox v0.0.0

replace github.com/dockersandbox/sandbox => ../
