// A Loader's stats as Prometheus metrics (obs/prometheus.h): wait ratio, samples/s, per-stage
// busy time, utilisation and latency histograms, failed samples by stage and code, arena and
// fetch-budget use, queue depths, next() waits. `labels` are added to every sample (e.g. the
// rank, when one process serves several). Names and meanings: README "Observability".
#pragma once

#include "stoker/obs/prometheus.h"
#include "stoker/pipeline/stats.h"

namespace stoker::pipeline {

void add_loader_metrics(obs::MetricText& m, const LoaderStats& s, const obs::Labels& labels);

}  // namespace stoker::pipeline
