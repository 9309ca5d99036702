// Command etcd is the upstream etcd server, built from its published module at the version
// pinned in go.mod. Nothing here is ours but this entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
