// Package kubernetes starts MySQL and MariaDB servers as Kubernetes pods,
// through client-go, with their datadir on a memory-backed emptyDir volume.
//
// Each server is a pod of one container running the server image with
// testdbd's own start script (instance/serverimage, shared with
// instance/docker: copy the image's pristine /testdbd/seed or initialize the
// datadir, create testdbd's admin account with --init-file, exec the server
// as the image's mysql user with the disposable-data settings and the
// hardening). Its datadir and tmpdir are emptyDir volumes
// with medium Memory and a sizeLimit of the configured tmpfs size; the
// container's memory request and limit come from the configuration (the
// daemon splits --memory-budget evenly over --max-instances), and the
// volumes' pages count against the limit. The pod has no service account
// token, restarts never (a server that exits is replaced, not restarted)
// and a TCP readiness probe; a server is handed out once testdbd's admin
// account logs in over TCP on the pod's IP and the pod is Ready.
//
// Leases get the pod's IP, or, with Config.Service, the DNS name of a
// ClusterIP Service of the server's own (owned by the pod, so deleted with
// it); only then does the server get a TLS certificate (for the Service's
// names; the pod's IP is known too late) and its leases a CA certificate.
// The daemon itself always talks to the pod's IP.
//
// One informer watches the provider's pods: a pod that fails, whose
// container ends, or that is deleted closes its instance's Done, and Err
// says what happened, with the log lines about its death. Pods and
// Services carry the labels io.testdbd.owner (a hash of the host name and
// the state directory, or Config.Owner) and io.testdbd.instance; a
// provider deletes the ones with its owner value left by a killed
// predecessor at start, and whatever remains at Close, never another
// owner's.
//
// It imports instance, the root package and client-go (k8s.io/api,
// apimachinery, client-go; Kubernetes' own server modules stay in the
// tools/k8s module). It is larger than most packages because it carries
// the few API calls it needs itself (api.go): it calls the API through
// REST clients over a scheme of core/v1 and authorization/v1 alone, not
// client-go's typed clientset, which registers every API group and would
// more than double the daemon's binary.
package kubernetes
