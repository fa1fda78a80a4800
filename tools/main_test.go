package tools

import (
	"testing"

	"github.com/dockersandbox/sandbox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
