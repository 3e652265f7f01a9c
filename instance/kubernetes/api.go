package kubernetes

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The provider talks to the API server through REST clients over a scheme
// of its own that knows core/v1 and authorization/v1 only. client-go's
// typed clients register every API group of Kubernetes, which would more
// than double the daemon's binary (30 MB → 68 MB) for types it never uses.
var (
	apiScheme      = runtime.NewScheme()
	apiCodecs      = serializer.NewCodecFactory(apiScheme)
	apiParamsCodec = runtime.NewParameterCodec(apiScheme)
)

func init() {
	must(corev1.AddToScheme(apiScheme))
	must(authorizationv1.AddToScheme(apiScheme))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// api is the part of the Kubernetes API the provider uses, in one
// namespace.
type api struct {
	core  rest.Interface // /api/v1
	authz rest.Interface // /apis/authorization.k8s.io/v1
	ns    string
}

func newAPI(rc *rest.Config, ns string) (*api, error) {
	client := func(gv schema.GroupVersion, path string) (rest.Interface, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion, c.APIPath = &gv, path
		c.NegotiatedSerializer = apiCodecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = "testdbd " + rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientFor(c)
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	authz, err := client(authorizationv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &api{core: core, authz: authz, ns: ns}, nil
}

func (a *api) createPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := a.core.Post().Namespace(a.ns).Resource("pods").Body(pod).Do(ctx).Into(out)
	return out, err
}

func (a *api) getPod(ctx context.Context, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := a.core.Get().Namespace(a.ns).Resource("pods").Name(name).Do(ctx).Into(out)
	return out, err
}

func (a *api) listPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := a.core.Get().Namespace(a.ns).Resource("pods").VersionedParams(&opts, apiParamsCodec).Do(ctx).Into(out)
	return out, err
}

func (a *api) watchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return a.core.Get().Namespace(a.ns).Resource("pods").VersionedParams(&opts, apiParamsCodec).Watch(ctx)
}

func (a *api) deletePod(ctx context.Context, name string, grace int64) error {
	return a.core.Delete().Namespace(a.ns).Resource("pods").Name(name).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: &grace}).Do(ctx).Error()
}

func (a *api) podLogs(ctx context.Context, name string, opts *corev1.PodLogOptions) ([]byte, error) {
	return a.core.Get().Namespace(a.ns).Resource("pods").Name(name).SubResource("log").
		VersionedParams(opts, apiParamsCodec).DoRaw(ctx)
}

func (a *api) createService(ctx context.Context, svc *corev1.Service) (*corev1.Service, error) {
	out := &corev1.Service{}
	err := a.core.Post().Namespace(a.ns).Resource("services").Body(svc).Do(ctx).Into(out)
	return out, err
}

func (a *api) listServices(ctx context.Context, opts metav1.ListOptions) (*corev1.ServiceList, error) {
	out := &corev1.ServiceList{}
	err := a.core.Get().Namespace(a.ns).Resource("services").VersionedParams(&opts, apiParamsCodec).Do(ctx).Into(out)
	return out, err
}

func (a *api) deleteService(ctx context.Context, name string) error {
	return a.core.Delete().Namespace(a.ns).Resource("services").Name(name).Body(&metav1.DeleteOptions{}).Do(ctx).Error()
}

func (a *api) accessReview(ctx context.Context, r *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
	out := &authorizationv1.SelfSubjectAccessReview{}
	err := a.authz.Post().Resource("selfsubjectaccessreviews").Body(r).Do(ctx).Into(out)
	return out, err
}
