// Command pause is the sandbox ("pause") process of every pod in the local
// test cluster: it holds the pod's namespaces, reaps orphaned children and
// exits on SIGINT or SIGTERM. scripts/k8s/build.sh builds it statically and
// packs it as the image registry.k8s.io/pause:3.10, since no registry can be
// reached to pull the real one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		children := make(chan os.Signal, 16)
		signal.Notify(children, syscall.SIGCHLD)
		for range children {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}()
	<-stop
	os.Exit(0)
}
