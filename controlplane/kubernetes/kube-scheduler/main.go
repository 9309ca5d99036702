// Command kube-scheduler is the upstream scheduler, built from its published module at the
// version pinned in ../go.mod. Nothing here is ours but this entry point.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
