// Command otel runs a command in a sandbox with the library's spans
// exported to stdout by the OpenTelemetry SDK's stdout exporter: a root
// span of its own, the library's spans (sandbox.New, sandbox.Execute,
// sandbox.Close) under it, and the command's environment carrying the
// trace (TRACEPARENT), so that a program in the sandbox can join it.
//
//	go run . -image python:3.13-slim
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/dockersandbox/sandbox"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	image := flag.String("image", sandbox.DefaultImage, "the sandbox's image")
	flag.Parse()
	if err := run(context.Background(), *image); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, image string) error {
	exp, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(tp) // or sandbox.WithTracerProvider(tp) for one sandbox

	ctx, span := tp.Tracer("example").Start(ctx, "agent-step")
	defer span.End()
	sb, err := sandbox.New(ctx, sandbox.WithImage(image))
	if err != nil {
		return err
	}
	defer sb.Close()
	res, err := sb.Execute(ctx, `echo "the command's TRACEPARENT: $TRACEPARENT"`)
	if err != nil {
		return err
	}
	fmt.Fprint(os.Stderr, res.Output)
	return nil
}
