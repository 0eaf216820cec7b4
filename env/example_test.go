package env_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
)

// An ExecutionEnv resolves paths the way models write them and serializes
// mutations of one file, however it is spelled.
func Example() {
	dir, _ := os.MkdirTemp("", "env-example")
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)
	ctx := context.Background()

	e := env.New(local.New(), env.Options{Name: "local", Cwd: dir, Home: "/home/dev"})
	abs, _ := e.Resolve(ctx, "@src/../src/main.go")
	fmt.Println(abs == filepath.Join(dir, "src/main.go"))
	home, _ := e.Resolve(ctx, "~/notes.md")
	fmt.Println(home)

	a, _ := e.Reserve(ctx, "src/main.go")
	b, _ := e.Reserve(ctx, filepath.Join(dir, "src", "main.go"))
	fmt.Println(a.Key() == b.Key())
	a.Release()
	b.Release()
	// Output:
	// true
	// /home/dev/notes.md
	// true
}
