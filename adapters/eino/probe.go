package eino

import (
	_ "github.com/cloudwego/eino/compose"
	_ "github.com/cloudwego/eino/components/tool"
	_ "github.com/cloudwego/eino/schema"
	_ "github.com/eino-contrib/jsonschema"
	_ "github.com/dockersandbox/sandbox/tools"
)
