// Command example is a controller-runtime operator for drainguard's tests and
// benchmark: it reconciles the ConfigMaps labelled app=drainguard-example in
// one namespace, each reconcile taking -reconcile-time of work that does not
// look at its context (think of a Helm install) and ending with an API write
// (an annotation naming this process). -no-drainguard runs it without the
// drainctrl package: the control, a plain controller-runtime manager.
//
// It prints one event per line on stdout (controller-runtime's logs go to
// stderr):
//
//	ready                       caches synced
//	leader                      elected (with -leader-elect)
//	reconcile start NS/NAME
//	reconcile done NS/NAME      the write succeeded
//	reconcile error NS/NAME: ERR
//	drain received              drainguard asked for the drain
//	exit CODE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drainguard "github.com/drainguard/drainguard/clients/go"
	drainctrl "github.com/drainguard/drainguard/clients/go/ctrl"
)

// Annotation is what a reconcile writes at its end: the -identity of the
// process that did it.
const Annotation = "drainguard.dev/reconciled-by"

func main() {
	os.Exit(run())
}

func run() int {
	var (
		reconcileTime  = flag.Duration("reconcile-time", 2*time.Second, "how long each reconcile works before its write")
		namespace      = flag.String("namespace", "default", "namespace of the ConfigMaps to reconcile")
		identity       = flag.String("identity", fmt.Sprintf("example-%d", os.Getpid()), "written to the "+Annotation+" annotation; the leader election identity")
		workers        = flag.Int("workers", 1, "MaxConcurrentReconciles")
		noDrainguard   = flag.Bool("no-drainguard", os.Getenv("EXAMPLE_NO_DRAINGUARD") == "1", "run without the drainctrl package (the control); env EXAMPLE_NO_DRAINGUARD=1")
		leaderElect    = flag.Bool("leader-elect", false, "use leader election (a Lease in -namespace)")
		leaderID       = flag.String("leader-election-id", "drainguard-example", "name of the leader Lease")
		retryPeriod    = flag.Duration("leader-retry-period", 500*time.Millisecond, "how often a candidate tries to take the Lease")
		metricsAddr    = flag.String("metrics-bind-address", "0", `metrics listener ("0": off)`)
		metricsSecure  = flag.Bool("metrics-secure", false, "serve metrics over https, authenticated and authorized against the API server")
		gracefulWithin = flag.Duration("graceful-shutdown-timeout", 30*time.Second, "the manager's GracefulShutdownTimeout when drainctrl does not set it")
	)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))

	if *noDrainguard {
		os.Unsetenv(drainguard.SocketEnv) // drainctrl is then disabled and changes nothing
	}
	dg := drainctrl.New(drainctrl.Options{Name: "drainguard-example"})
	selector := labels.SelectorFromSet(labels.Set{"app": "drainguard-example"})
	opts := ctrl.Options{
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{*namespace: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: selector}},
		},
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr, SecureServing: *metricsSecure},
		LeaderElection:          *leaderElect,
		LeaderElectionID:        *leaderID,
		LeaderElectionNamespace: *namespace,
		RetryPeriod:             retryPeriod,
		GracefulShutdownTimeout: gracefulWithin,
	}
	if *metricsSecure {
		opts.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if dg.Enabled() {
		opts.GracefulShutdownTimeout = nil // drainctrl's choice
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fail(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = *identity
	mgr, err := ctrl.NewManager(cfg, dg.ManagerOptions(opts))
	if err != nil {
		return fail(err)
	}
	r := &reconciler{client: mgr.GetClient(), identity: *identity, work: *reconcileTime}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("example").
		For(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(dg.Reconciler("example", r))
	if err != nil {
		return fail(err)
	}
	if err := mgr.Add(announce{mgr}); err != nil {
		return fail(err)
	}
	if *leaderElect {
		go func() {
			<-mgr.Elected()
			fmt.Println("leader")
		}()
	}
	if dg.Enabled() {
		go func() {
			<-dg.Client().Draining()
			fmt.Println("drain received")
		}()
	}
	if err := mgr.Start(dg.StopContext(ctrl.SetupSignalHandler())); err != nil {
		return fail(err)
	}
	fmt.Println("exit 0")
	return 0
}

func fail(err error) int {
	fmt.Printf("exit 1 %v\n", err)
	return 1
}

type reconciler struct {
	client   client.Client
	identity string
	work     time.Duration
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := r.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if _, done := cm.Annotations[Annotation]; done {
		return reconcile.Result{}, nil
	}
	fmt.Printf("reconcile start %s\n", req.NamespacedName)
	time.Sleep(r.work) // work that does not look at ctx, as a Helm install does not
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[Annotation] = r.identity
	if err := r.client.Patch(ctx, &cm, patch); err != nil {
		fmt.Printf("reconcile error %s: %v\n", req.NamespacedName, err)
		return reconcile.Result{}, err
	}
	fmt.Printf("reconcile done %s\n", req.NamespacedName)
	return reconcile.Result{}, nil
}

// announce prints "ready" once the caches are synced, on every replica.
type announce struct{ mgr manager.Manager }

func (a announce) NeedLeaderElection() bool { return false }

func (a announce) Start(ctx context.Context) error {
	if a.mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Println("ready")
	}
	<-ctx.Done()
	return nil
}
