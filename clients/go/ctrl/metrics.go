package drainctrl

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	outcomeDrained  = "drained"  // every reconcile in flight at the drain returned before its deadline
	outcomeDeadline = "deadline" // some were still running when the deadline passed
)

// The collectors live in controller-runtime's registry, beside its own
// controller_runtime_active_workers and controller_runtime_reconcile_time_seconds.
var (
	inflightGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "drainguard_reconciles_in_flight",
		Help: "Reconciles running behind the drain gate, per controller.",
	}, []string{"controller"})
	refusedCounter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "drainguard_reconciles_refused_total",
		Help: "Requests the drain gate refused because the drain had started or the manager had stopped, per controller.",
	}, []string{"controller"})
	outcomeGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "drainguard_drain_outcome",
		Help: "1 for how the drain ended per controller: drained (its reconciles in flight all returned) or deadline (some were still running at the drain deadline).",
	}, []string{"controller", "outcome"})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(inflightGauge, refusedCounter, outcomeGauge)
	})
}
