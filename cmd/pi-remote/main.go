// Command pi-remote runs an LLM agent's tools where the work is: on this
// machine, on a remote dev box over one persistent SSH connection, or in a
// sandbox container.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
