// Command kube-apiserver is the upstream API server, built from its published module at the
// version pinned in ../go.mod. Nothing here is ours but this entry point.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
