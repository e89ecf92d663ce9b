package runner

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy/kubernetes"
)

// Bounds of the Kubernetes runner, stated in the resource's documentation.
const (
	// KubePoll is how often the provider reads the runner's events and state: its lines
	// reach the local progress files within it (plus one request through the API server).
	KubePoll = time.Second
	// UnschedulableBound is how long the runner's pod may stay unschedulable before the
	// apply fails and removes the Job (a cluster autoscaler may add a node meanwhile).
	UnschedulableBound = 60 * time.Second
	// APILostBound is how long the API server may fail every request before the apply
	// stops following the runner (which goes on measuring).
	APILostBound = 60 * time.Second
	// jobLabel is the label the Job controller puts on the Job's pods, indexAnnotation the
	// annotation with a pod's completion index in an Indexed Job.
	jobLabel        = "batch.kubernetes.io/job-name"
	indexAnnotation = "batch.kubernetes.io/job-completion-index"
	// tokenAnnotation holds a fleet's Spec.FleetToken on its Job, for the provider that
	// attaches to it later.
	tokenAnnotation = "dev.llmserve.runner.fleet-token" //nolint:gosec // G101: an annotation key, not a credential
	// secretSeedMax bounds the seed journal carried in the runner's Secret (a Secret holds
	// at most 1 MiB).
	secretSeedMax = 768 << 10
)

// KubeRBAC is the Role the provider's identity needs in the runner's namespace; the
// runner's own pod needs no API access at all (no service account token is mounted).
const KubeRBAC = "jobs.batch: get, list, create, delete; secrets: create, update, delete; pods: list; pods/proxy: get, and create where runner.kubernetes.pods is above 1 (pod_access = \"api_proxy\"); limitranges: list, optional (the runner's pods then request no more than the namespace's default container limit)"

// Kubernetes runs benchmarks in runner Jobs in one namespace of a cluster.
type Kubernetes struct {
	Cluster      *kubernetes.Cluster
	Namespace    string
	Image        string
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// Access is how the provider reaches the runner's pod: the API server's pod proxy, or
	// the pod network where Terraform runs inside the cluster.
	Access kubernetes.Access

	apiLostBound time.Duration // APILostBound unless set (tests)
}

// Target is the label value that names the server a runner measures: its endpoint, hashed
// (one measurement per server at a time).
func Target(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return hex.EncodeToString(sum[:12])
}

// Run runs job in a runner Job and waits for its end. A Job of the same run found in the
// namespace is attached to (running), collected (finished) or replaced by one that resumes
// from its journal (stopped part-way); Jobs measuring the same endpoint with another key are
// stopped and removed. The Job goes on when ctx ends (a *KubeDetachedError).
func (k *Kubernetes) Run(ctx context.Context, job Job, endpoint string) (Outcome, error) {
	out := Outcome{Network: "the pod network of namespace " + k.Namespace}
	return run(ctx, &kubeRunners{k: k, target: Target(endpoint)}, job, out)
}

// kubeRunners is the Backend of the runner Jobs of one endpoint in the namespace: each is
// reached through its pod's HTTP server (runner serve), through the API server's pod proxy
// or the pod network.
type kubeRunners struct {
	k      *Kubernetes
	target string
}

func (b *kubeRunners) process(j batchv1.Job) Process {
	return Process{ID: j.Name, Key: j.Labels[KeyLabel], Created: j.CreationTimestamp.Time, Running: !jobEnded(j),
		Name: "runner Job " + b.k.Namespace + "/" + j.Name}
}

// jobEnded: the Job controller gave up on it (or it completed, which a runner never does by
// itself: it serves its result until it is removed).
func jobEnded(j batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Runners lists the runner Jobs measuring the endpoint; Jobs being deleted are gone already.
func (b *kubeRunners) Runners(ctx context.Context) ([]Process, error) {
	jobs, err := b.k.jobs(ctx, KindLabel+"=kubernetes,"+TargetLabel+"="+b.target)
	if err != nil {
		return nil, b.k.wrap(ctx, err, "list", "jobs.batch")
	}
	var out []Process
	for _, j := range jobs {
		if j.DeletionTimestamp == nil {
			out = append(out, b.process(j))
		}
	}
	return out, nil
}

func (b *kubeRunners) Start(ctx context.Context, job Job, seed []byte) (Process, error) {
	key := job.Spec.Key()
	name, err := b.k.start(ctx, job, key, b.target, seed)
	if err != nil {
		return Process{}, err
	}
	return Process{ID: name, Key: key, Created: time.Now(), Running: true, Name: "runner Job " + b.k.Namespace + "/" + name,
		Place: "(image " + b.k.Image + ")"}, nil
}

func (b *kubeRunners) Follow(ctx context.Context, p Process, job Job) (Result, error) {
	return b.k.follow(ctx, job, p.ID)
}

// Open reads one of the runner's files through its pod's HTTP server; false when its pod
// is not running or does not answer.
func (b *kubeRunners) Open(ctx context.Context, p Process, f File) (io.ReadCloser, bool, error) {
	pods, _, err := b.k.pods(ctx, p.ID)
	var raw []byte
	ok := err == nil && len(pods) > 0 && reachable(pods[0]) // pod 0 runs the search and holds its files
	if ok {
		raw, ok = b.k.get(ctx, *pods[0], map[File]string{ResultFile: resultPath, JournalFile: journalPath, RecordsArchive: recordsPath}[f])
	}
	switch {
	case !ok && f == RecordsArchive:
		// A finished run always serves its records (an empty archive when none were kept).
		return nil, false, errors.New("its pod did not serve them")
	case !ok:
		return nil, false, nil
	}
	return io.NopCloser(bytes.NewReader(raw)), true, nil
}

func (b *kubeRunners) Remove(ctx context.Context, p Process, _ time.Duration) error {
	return b.k.remove(ctx, p.ID)
}

func (k *Kubernetes) jobs(ctx context.Context, selector string) ([]batchv1.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, k.Cluster.CallTimeout())
	defer cancel()
	l, err := k.Cluster.Clientset().BatchV1().Jobs(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// start creates the runner's Secret (its spec, with the API keys, and the seed journal) and
// its Job; a Job that cannot be created leaves no Secret behind.
func (k *Kubernetes) start(ctx context.Context, job Job, key, target string, seed []byte) (string, error) {
	pods := max(job.Spec.Config.Pods, 1)
	if pods > 1 {
		var tok [16]byte
		_, _ = rand.Read(tok[:])
		job.Spec.FleetToken = hex.EncodeToString(tok[:])
	}
	spec, err := json.Marshal(job.Spec)
	if err != nil {
		return "", fmt.Errorf("encoding the runner's spec: %w", err)
	}
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	name := "llmserve-runner-" + key[:10] + "-" + hex.EncodeToString(suffix[:])
	labels := map[string]string{KindLabel: "kubernetes", TargetLabel: target, KeyLabel: key, kubernetes.ManagedByLabel: "llmserve"}
	data := map[string][]byte{"spec.json": spec}
	if len(seed) > 0 && len(seed) <= secretSeedMax {
		data["journal.jsonl"] = seed
	}
	cs := k.Cluster.Clientset()
	callCtx, cancel := context.WithTimeout(ctx, k.Cluster.CallTimeout())
	defer cancel()
	sec, err := cs.CoreV1().Secrets(k.Namespace).Create(callCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque, Data: data,
	}, metav1.CreateOptions{})
	if err != nil {
		return "", k.wrap(ctx, err, "create", "secrets")
	}
	jobObj := k.jobObject(name, labels, pods, job.Spec.FleetToken)
	if req, capped := k.fitLimitRanges(callCtx); capped != "" {
		jobObj.Spec.Template.Spec.Containers[0].Resources.Requests = req
		if job.Note != nil {
			job.Note(time.Now().UTC().Format("15:04:05") + "  runner: " + capped)
		}
	}
	created, err := cs.BatchV1().Jobs(k.Namespace).Create(callCtx, jobObj, metav1.CreateOptions{})
	if err != nil {
		rmCtx, rmCancel := context.WithTimeout(context.WithoutCancel(ctx), k.Cluster.CallTimeout())
		defer rmCancel()
		if rmErr := cs.CoreV1().Secrets(k.Namespace).Delete(rmCtx, name, metav1.DeleteOptions{}); rmErr != nil && !apierrors.IsNotFound(rmErr) {
			return "", errors.Join(k.wrap(ctx, err, "create", "jobs.batch"), fmt.Errorf("the runner's Secret %s/%s is left: kubectl delete secret -n %s %s: %w", k.Namespace, name, k.Namespace, name, rmErr))
		}
		return "", k.wrap(ctx, err, "create", "jobs.batch")
	}
	// The Secret goes with its Job, whoever deletes the Job.
	sec.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: created.Name, UID: created.UID}}
	if _, err := cs.CoreV1().Secrets(k.Namespace).Update(callCtx, sec, metav1.UpdateOptions{}); err != nil {
		_ = k.remove(context.WithoutCancel(ctx), name)
		return "", k.wrap(ctx, err, "update", "secrets")
	}
	return name, nil
}

// jobObject is the runner's Job: one pod, restarted in place when the runner process dies
// (its emptyDir, with the journal, kept: it resumes from it), no service account token, no
// privileges, the spec from the Secret as a read-only file. A fleet (pods above 1) is an
// Indexed Job of that many pods at once, each told its index; pod 0 runs the search.
func (k *Kubernetes) jobObject(name string, labels map[string]string, pods int, token string) *batchv1.Job {
	no, yes := false, true
	backoff := int32(2 * pods)
	uid, fsGroup := int64(65532), int64(65532)
	mode := int32(0o440)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyOnFailure,
					AutomountServiceAccountToken: &no,
					EnableServiceLinks:           &no,
					NodeSelector:                 k.NodeSelector,
					Tolerations:                  k.Tolerations,
					SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, FSGroup: &fsGroup},
					Containers: []corev1.Container{{
						Name:         "runner",
						Image:        k.Image,
						Args:         []string{"runner", "serve", "--listen", ":" + strconv.Itoa(ServePort), "--dir", Dir, "--spec", "/llmserve-spec/spec.json"},
						Ports:        []corev1.ContainerPort{{Name: "runner", ContainerPort: ServePort}},
						Resources:    corev1.ResourceRequirements{Requests: runnerRequests()},
						VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: Dir}, {Name: "spec", MountPath: "/llmserve-spec", ReadOnly: true}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "spec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: &mode}}},
					},
				},
			},
		},
	}
	if pods > 1 {
		n, indexed := int32(pods), batchv1.IndexedCompletion
		j.Spec.Completions, j.Spec.Parallelism, j.Spec.CompletionMode = &n, &n, &indexed
		j.Annotations = map[string]string{tokenAnnotation: token}
		c := &j.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: IndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + indexAnnotation + "']"}}})
	}
	return j
}

// runnerRequests is what a runner container requests of its node, and no limit: 1 CPU and
// 256 MiB.
func runnerRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")}
}

// fitLimitRanges is runnerRequests lowered to the namespace's LimitRanges, and a line saying
// what lowered them ("" where nothing did). A LimitRange's default container limit (its
// maximum where it has none) is what the LimitRanger admission plugin gives a container that
// sets no limit, and a request above the limit is invalid: the Job controller could create
// none of the runner's pods, and the apply would wait for them to its timeout. Lowered to
// that limit, the pods run under it, as everything else in the namespace does; a trial the
// limit starves is flagged client-bound by the runner's own CPU figures (its cgroup's
// throttling). Reading LimitRanges is best effort: an identity that may not list them keeps
// the requests as they are.
func (k *Kubernetes) fitLimitRanges(ctx context.Context) (corev1.ResourceList, string) {
	list, err := k.Cluster.Clientset().CoreV1().LimitRanges(k.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return runnerRequests(), ""
	}
	return fitRequests(k.Namespace, list.Items)
}

// fitRequests is runnerRequests lowered to the container limits of the LimitRanges of ns.
func fitRequests(ns string, ranges []corev1.LimitRange) (corev1.ResourceList, string) {
	req := runnerRequests()
	var why []string
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				bound, ok := item.Default[name]
				if m, hasMax := item.Max[name]; hasMax && (!ok || m.Cmp(bound) < 0) {
					bound, ok = m, true
				}
				if cur := req[name]; ok && bound.Cmp(cur) < 0 {
					req[name] = bound.DeepCopy()
					why = append(why, fmt.Sprintf("%s %s (LimitRange %s)", name, bound.String(), lr.Name))
				}
			}
		}
	}
	if len(why) == 0 {
		return req, ""
	}
	return req, fmt.Sprintf("namespace %s limits every container to %s, below what a runner pod requests (1 CPU, 256 MiB): "+
		"each runner pod requests %s CPU and %s memory and runs under that limit; a trial it cannot carry is flagged client-bound "+
		"(raise runner.kubernetes.pods to spread each trial over more pods)",
		ns, strings.Join(why, ", "), req.Cpu().String(), req.Memory().String())
}

// pods are the Job's pods by completion index, the newest of each index not being deleted
// (nil where the Job controller has made none yet), and the Job itself (nil when it is gone).
// Pod 0 runs the search; a Job of one pod has only it.
func (k *Kubernetes) pods(ctx context.Context, name string) ([]*corev1.Pod, *batchv1.Job, error) {
	callCtx, cancel := context.WithTimeout(ctx, k.Cluster.CallTimeout())
	defer cancel()
	cs := k.Cluster.Clientset()
	j, err := cs.BatchV1().Jobs(k.Namespace).Get(callCtx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, k.wrap(ctx, err, "get", "jobs.batch")
	}
	list, err := cs.CoreV1().Pods(k.Namespace).List(callCtx, metav1.ListOptions{LabelSelector: jobLabel + "=" + name})
	if err != nil {
		return nil, j, k.wrap(ctx, err, "list", "pods")
	}
	out := make([]*corev1.Pod, jobPods(j))
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		idx := 0
		if v, ok := p.Annotations[indexAnnotation]; ok {
			if idx, err = strconv.Atoi(v); err != nil || idx < 0 || idx >= len(out) {
				continue
			}
		}
		if out[idx] == nil || out[idx].CreationTimestamp.Before(&p.CreationTimestamp) {
			out[idx] = p
		}
	}
	return out, j, nil
}

// jobPods is how many pods a runner Job runs at once (runner.kubernetes.pods).
func jobPods(j *batchv1.Job) int {
	if j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1 {
		return int(*j.Spec.Parallelism)
	}
	return 1
}

// reachable says whether a pod's runner can be asked: running with an IP.
func reachable(p *corev1.Pod) bool {
	return p != nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
}

// follow reads the runner's events and state every KubePoll until its result is there.
func (k *Kubernetes) follow(ctx context.Context, job Job, name string) (Result, error) {
	var offset int64
	var apiFailingSince time.Time
	unschedulableSince := map[int]time.Time{}
	var announced announcement
	tick := time.NewTicker(KubePoll)
	defer tick.Stop()
	for {
		pods, j, err := k.pods(ctx, name)
		var pod *corev1.Pod
		if len(pods) > 0 {
			pod = pods[0]
		}
		switch {
		case ctx.Err() != nil:
			return Result{}, &KubeDetachedError{Job: name, Namespace: k.Namespace, TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
		case err != nil:
			var rbac *RBACError
			if errors.As(err, &rbac) {
				return Result{}, err
			}
			if apiFailingSince.IsZero() {
				apiFailingSince = time.Now()
			}
			if bound := cmp.Or(k.apiLostBound, APILostBound); time.Since(apiFailingSince) > bound {
				return Result{}, &APILostError{Job: name, Namespace: k.Namespace, Host: k.Cluster.Host(), For: bound, Err: err}
			}
		case j == nil:
			return Result{}, fmt.Errorf("the runner Job %s/%s was deleted while the apply followed it; apply again to start a new runner (it resumes from progress_file, when set)", k.Namespace, name)
		default:
			apiFailingSince = time.Time{}
			if reachable(pod) {
				k.announcePeers(ctx, j, pods, &announced)
				offset = k.events(ctx, *pod, offset, job.Event)
				if res, ok := k.result(ctx, *pod); ok {
					// The last lines written before the result.
					for next := k.events(ctx, *pod, offset, job.Event); next != offset; next = k.events(ctx, *pod, offset, job.Event) {
						offset = next
					}
					return res, nil
				}
			}
			if fault := k.faults(pods, j, unschedulableSince); fault != nil {
				if err := k.remove(context.WithoutCancel(ctx), name); err != nil {
					return Result{}, errors.Join(fault, err)
				}
				return Result{}, fault
			}
		}
		select {
		case <-ctx.Done():
			return Result{}, &KubeDetachedError{Job: name, Namespace: k.Namespace, TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
		case <-tick.C:
		}
	}
}

// imageFaults are the waiting reasons of a container that will not start by waiting.
var imageFaults = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// faults is what keeps the runner's pods from measuring, if anything does: the Job's own
// failure or any pod's fault; pods no node accepts are counted over the fleet.
func (k *Kubernetes) faults(pods []*corev1.Pod, j *batchv1.Job, unschedulableSince map[int]time.Time) error {
	var unscheduled *UnschedulableError
	waiting := 0
	for i, p := range pods {
		since := unschedulableSince[i]
		err := k.fault(p, j, &since)
		unschedulableSince[i] = since
		if !since.IsZero() {
			waiting++
		}
		var u *UnschedulableError
		switch {
		case errors.As(err, &u):
			if unscheduled == nil {
				unscheduled = u
			}
		case err != nil:
			return err
		}
	}
	if unscheduled != nil {
		unscheduled.Pods, unscheduled.Unscheduled = len(pods), waiting
		return unscheduled
	}
	return nil
}

// fault is what keeps one runner pod from measuring, if anything does.
func (k *Kubernetes) fault(pod *corev1.Pod, j *batchv1.Job, unschedulableSince *time.Time) error {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return &KubeDiedError{Job: j.Name, Namespace: k.Namespace, Why: fmt.Sprintf("the Job failed (%s: %s)", c.Reason, c.Message), Last: lastTermination(pod)}
		}
	}
	if pod == nil {
		return nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if unschedulableSince.IsZero() {
				*unschedulableSince = time.Now()
			}
			if time.Since(*unschedulableSince) > UnschedulableBound {
				return &UnschedulableError{Job: j.Name, Namespace: k.Namespace, Message: c.Message}
			}
			return nil
		}
	}
	*unschedulableSince = time.Time{}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			if imageFaults[w.Reason] {
				return &KubeImageError{Job: j.Name, Namespace: k.Namespace, Image: k.Image, Reason: w.Reason, Message: w.Message}
			}
			if w.Reason == "CrashLoopBackOff" {
				return &KubeDiedError{Job: j.Name, Namespace: k.Namespace, Why: fmt.Sprintf("it keeps crashing (CrashLoopBackOff after %d restarts)", cs.RestartCount), Last: lastTermination(pod)}
			}
		}
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return &KubeDiedError{Job: j.Name, Namespace: k.Namespace, Why: "its pod " + pod.Name + " ended (" + string(pod.Status.Phase) + ")", Last: lastTermination(pod)}
	}
	return nil
}

func lastTermination(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t != nil {
			s := fmt.Sprintf("exit status %d", t.ExitCode)
			if t.Reason != "" {
				s += ", " + t.Reason
			}
			if t.Message != "" {
				s += ": " + t.Message
			}
			return s
		}
	}
	return ""
}

// events mirrors the runner's events from offset and returns the offset after them.
func (k *Kubernetes) events(ctx context.Context, pod corev1.Pod, offset int64, event func(Event)) int64 {
	raw, ok := k.get(ctx, pod, eventsPath+"?offset="+strconv.FormatInt(offset, 10))
	if !ok {
		return offset
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var e Event
		if len(line) == 0 || json.Unmarshal(line, &e) != nil {
			continue
		}
		if event != nil {
			event(e)
		}
	}
	return offset + int64(len(raw))
}

// result is the runner's Result, once it has one.
func (k *Kubernetes) result(ctx context.Context, pod corev1.Pod) (Result, bool) {
	raw, ok := k.get(ctx, pod, resultPath)
	if !ok {
		return Result{}, false
	}
	var res Result
	if json.Unmarshal(raw, &res) != nil {
		return Result{}, false
	}
	return res, true
}

// announcement is the other pods' addresses last posted to pod 0, and when.
type announcement struct {
	peers string
	at    time.Time
}

// announcePeers tells pod 0 of a fleet where the other pods are (the pods hold no API
// credentials to find one another): once every one runs with an IP, again whenever one
// changes (a pod replaced), and every 15 s besides.
func (k *Kubernetes) announcePeers(ctx context.Context, j *batchv1.Job, pods []*corev1.Pod, last *announcement) {
	if len(pods) < 2 {
		return
	}
	addrs := make([]string, 0, len(pods)-1)
	for _, p := range pods[1:] {
		if !reachable(p) {
			return // pod 0 waits for them; the next poll posts them all
		}
		addrs = append(addrs, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(ServePort)))
	}
	peers := strings.Join(addrs, ",")
	if peers == last.peers && time.Since(last.at) < 15*time.Second {
		return
	}
	body, _ := json.Marshal(map[string][]string{"peers": addrs})
	if k.post(ctx, *pods[0], peersPath, body, j.Annotations[tokenAnnotation]) {
		*last = announcement{peers: peers, at: time.Now()}
	}
}

// post sends one request to the runner's HTTP server with the fleet's token; false on
// anything but a 2xx answer (the next poll tries again).
func (k *Kubernetes) post(ctx context.Context, pod corev1.Pod, p string, body []byte, token string) bool {
	base, client := k.Cluster.PodBase(pod, ServePort, k.Access)
	ctx, cancel := context.WithTimeout(ctx, k.Cluster.CallTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+p, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set(tokenHeader, token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return resp.StatusCode/100 == 2
}

// get reads one path of the runner's HTTP server; false on anything but 200.
func (k *Kubernetes) get(ctx context.Context, pod corev1.Pod, p string) ([]byte, bool) {
	base, client := k.Cluster.PodBase(pod, ServePort, k.Access)
	ctx, cancel := context.WithTimeout(ctx, k.Cluster.CallTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+p, nil)
	if err != nil {
		return nil, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxFileBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	return raw, true
}

// remove deletes a runner Job, its pods and its Secret; ones already gone are fine.
func (k *Kubernetes) remove(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, k.Cluster.CallTimeout())
	defer cancel()
	cs := k.Cluster.Clientset()
	bg := metav1.DeletePropagationBackground
	if err := cs.BatchV1().Jobs(k.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		return k.wrap(ctx, err, "delete", "jobs.batch")
	}
	if err := cs.CoreV1().Secrets(k.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return k.wrap(ctx, err, "delete", "secrets")
	}
	return nil
}

// Remove removes every runner Job of the run with key in the namespace (the benchmark's
// destroy), with its pods and Secret.
func (k *Kubernetes) Remove(ctx context.Context, key string) error {
	jobs, err := k.jobs(ctx, KindLabel+"=kubernetes,"+KeyLabel+"="+key)
	if err != nil {
		return k.wrap(ctx, err, "list", "jobs.batch")
	}
	for _, j := range jobs {
		if err := k.remove(ctx, j.Name); err != nil {
			return err
		}
	}
	return nil
}

// wrap says what the API server refused (RBACError) or, when the cluster itself could not be
// used (no answer within its bound, a refused connection: kubernetes.ClusterError), which
// request the runner was making.
func (k *Kubernetes) wrap(ctx context.Context, err error, verb, resource string) error {
	if apierrors.IsForbidden(err) {
		return &RBACError{Namespace: k.Namespace, Verb: verb, Resource: resource, Err: err}
	}
	err = k.Cluster.Explain(ctx, err)
	if ce := (*kubernetes.ClusterError)(nil); errors.As(err, &ce) {
		return fmt.Errorf("runner: %s %s in namespace %s: %w", verb, resource, k.Namespace, err)
	}
	return err
}

// RBACError is a request of the runner's the provider's identity may not make.
type RBACError struct {
	Namespace, Verb, Resource string
	Err                       error
}

func (e *RBACError) Error() string {
	return fmt.Sprintf("the Kubernetes API server forbids the provider's identity to %s %s in namespace %s (403 Forbidden), which the runner needs; nothing was left running. "+
		"Grant it a Role in that namespace with %s (the runner's pod itself needs no permission), or set runner.kubernetes.namespace to one where it has them: %v",
		e.Verb, e.Resource, e.Namespace, KubeRBAC, e.Err)
}
func (e *RBACError) Unwrap() error { return e.Err }

// Summary is the diagnostic's title.
func (e *RBACError) Summary() string {
	return "Kubernetes credentials lack a permission the runner needs"
}

// KubeDetachedError is an apply that stopped following a runner Job that goes on measuring.
type KubeDetachedError struct {
	Job, Namespace string
	TimedOut       bool
}

func (e *KubeDetachedError) Error() string {
	why := "interrupted"
	if e.TimedOut {
		why = "timed out (timeouts.create)"
	}
	return fmt.Sprintf("%s while following the runner; the runner Job %s keeps measuring in namespace %s. Apply again with the same configuration to attach to it, or to collect its result once it has finished: no trial is lost or measured twice. Destroying the benchmark or changing its configuration stops and removes it",
		why, e.Job, e.Namespace)
}

// Summary is the diagnostic's title.
func (e *KubeDetachedError) Summary() string {
	if e.TimedOut {
		return "Capacity benchmark timed out; its runner goes on"
	}
	return "Capacity benchmark interrupted; its runner goes on"
}

// APILostError is the API server failing every request for APILostBound while a runner Job
// was followed.
type APILostError struct {
	Job, Namespace, Host string
	For                  time.Duration
	Err                  error
}

func (e *APILostError) Error() string {
	return fmt.Sprintf("lost the Kubernetes API server at %s for %s while following the runner Job %s in namespace %s: %v. The runner does not need the API server: it keeps measuring, and keeps its result until it is collected. Apply again with the same configuration once the API server answers to attach to it or collect its result",
		e.Host, e.For, e.Job, e.Namespace, e.Err)
}
func (e *APILostError) Unwrap() error { return e.Err }

// Summary is the diagnostic's title.
func (e *APILostError) Summary() string {
	return "Lost the Kubernetes API server of the benchmark's runner"
}

// UnschedulableError is a runner pod no node accepts: of a fleet of Pods, Unscheduled are
// waiting for a node.
type UnschedulableError struct {
	Job, Namespace, Message string
	Pods, Unscheduled       int
}

func (e *UnschedulableError) Error() string {
	if e.Pods > 1 {
		return fmt.Sprintf("the runner Job %s in namespace %s could not schedule %d of its %d pods within %s: %s. The Job was removed, nothing was measured. "+
			"runner.kubernetes.pods = %d needs %d pods running at once, each requesting 1 CPU and 256 MiB: lower runner.kubernetes.pods to what the nodes hold, "+
			"or give runner.kubernetes.node_selector and tolerations that match nodes with room for %d of them",
			e.Job, e.Namespace, e.Unscheduled, e.Pods, UnschedulableBound, e.Message, e.Pods, e.Pods, e.Pods)
	}
	return fmt.Sprintf("the runner Job %s in namespace %s could not be scheduled within %s: %s. The Job was removed, nothing was measured. The runner's pod requests 1 CPU and 256 MiB; "+
		"give runner.kubernetes.node_selector and tolerations that match a node with room for it", e.Job, e.Namespace, UnschedulableBound, e.Message)
}

// Summary is the diagnostic's title.
func (e *UnschedulableError) Summary() string { return "Capacity benchmark runner cannot be scheduled" }

// KubeImageError is a runner container that cannot start from its image.
type KubeImageError struct{ Job, Namespace, Image, Reason, Message string }

func (e *KubeImageError) Error() string {
	return fmt.Sprintf("the runner Job %s in namespace %s cannot start its container from image %q (%s: %s). The Job was removed, nothing was measured. "+
		"runner.kubernetes.image must be the runner image of this provider version (the release publishes it), pullable by the namespace's nodes",
		e.Job, e.Namespace, e.Image, e.Reason, strings.TrimSpace(e.Message))
}

// Summary is the diagnostic's title.
func (e *KubeImageError) Summary() string { return "Capacity benchmark runner image cannot start" }

// KubeDiedError is a runner Job that ended without a result.
type KubeDiedError struct{ Job, Namespace, Why, Last string }

func (e *KubeDiedError) Error() string {
	s := fmt.Sprintf("the runner Job %s in namespace %s ended without a result: %s", e.Job, e.Namespace, e.Why)
	if e.Last != "" {
		s += "; its container's last end: " + e.Last
	}
	return s + ". The Job was removed with its pod's journal; the trials it finished are kept in progress_file where that is set, and the next apply resumes from them"
}

// Summary is the diagnostic's title.
func (e *KubeDiedError) Summary() string { return "Capacity benchmark runner died" }
