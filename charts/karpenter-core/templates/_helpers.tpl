{{/* The chart's name. */}}
{{- define "karpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified name: the release name, unless it already contains the chart's. */}}
{{- define "karpenter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "karpenter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "karpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpenter.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{- define "karpenter.labels" -}}
helm.sh/chart: {{ include "karpenter.chart" . | quote }}
{{ include "karpenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "karpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The controller image. Upstream's names (controller.image.*) are the chart's; this chart's
earlier image.* values, when any of them is set, replace the tag and digest as a group
(so a digest from an upstream values file is never combined with another image), and the
repository when set.
*/}}
{{- define "karpenter.image" -}}
{{- $img := .Values.controller.image | default dict -}}
{{- $old := .Values.image | default dict -}}
{{- /* empty (upstream's KWOK chart leaves it so) is this chart's own image */ -}}
{{- $repo := $img.repository | default "ghcr.io/karpenter-core/karpenter-core" -}}
{{- $tag := $img.tag -}}
{{- $digest := $img.digest -}}
{{- if or $old.repository $old.tag $old.digest -}}
{{- $repo = $old.repository | default $repo -}}
{{- $tag = $old.tag -}}
{{- $digest = $old.digest -}}
{{- end -}}
{{- if and $digest $tag -}}
{{- printf "%s:%s@%s" $repo $tag $digest -}}
{{- else if $digest -}}
{{- printf "%s@%s" $repo $digest -}}
{{- else -}}
{{- printf "%s:%s" $repo ($tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end }}

{{/* imagePullPolicy (upstream's name), or this chart's earlier image.pullPolicy when set. */}}
{{- define "karpenter.imagePullPolicy" -}}
{{- (.Values.image | default dict).pullPolicy | default .Values.imagePullPolicy -}}
{{- end }}

{{- define "karpenter.containerName" -}}
{{- .Values.controller.containerName | default "controller" -}}
{{- end }}

{{/*
FEATURE_GATES from settings.featureGates: each gate's camelCase key (upstream's values), or
its own name (upstream's v1.8.0 chart spelt StaticCapacity so); a gate with neither is left
to the operator's default.
*/}}
{{- define "karpenter.featureGates" -}}
{{- $g := .Values.settings.featureGates | default dict -}}
{{- $out := list -}}
{{- range $gate := list "NodeRepair" "ReservedCapacity" "SpotToSpotConsolidation" "NodeOverlay" "StaticCapacity" "CapacityBuffer" -}}
{{- $v := index $g (untitle $gate) -}}
{{- if kindIs "invalid" $v }}{{ $v = index $g $gate }}{{ end -}}
{{- if not (kindIs "invalid" $v) }}{{ $out = append $out (printf "%s=%v" $gate $v) }}{{ end -}}
{{- end -}}
{{- join "," $out -}}
{{- end }}

{{/*
Upstream's provider settings: settings.<key> becomes the environment variable each
provider that takes the setting reads (`karpenter plugins` lists them), with the providers
that read it (and upstream's default, where a provider that does not read the setting
loses nothing). A setting that is unset, null or "" is not written.
*/}}
{{- define "karpenter.providerSettingEnv" -}}
clusterName: {env: CLUSTER_NAME, providers: [aws, azure, gcp]}
clusterEndpoint: {env: CLUSTER_ENDPOINT, providers: [aws, azure]}
clusterCABundle: {env: CLUSTER_CA_BUNDLE, providers: [aws, azure]}
interruptionQueue: {env: INTERRUPTION_QUEUE, providers: [aws]}
isolatedVPC: {env: ISOLATED_VPC, providers: [aws], upstreamDefault: false}
reservedENIs: {env: RESERVED_ENIS, providers: [aws], upstreamDefault: "0"}
vmMemoryOverheadPercent: {env: VM_MEMORY_OVERHEAD_PERCENT, providers: [aws, azure, gcp], upstreamDefault: 0.075}
{{- end }}

{{/* Whether a value counts as set: not null, not "", not an empty list or map. */}}
{{- define "karpenter.isSet" -}}
{{- if not (or (kindIs "invalid" .) (and (kindIs "string" .) (eq . "")) (and (or (kindIs "map" .) (kindIs "slice" .)) (empty .))) }}true{{ end -}}
{{- end }}

{{/*
Values of upstream's chart this chart accepts but does not act on, one "- key: why" line
each, for NOTES.txt. A key set to what the operator does anyway is not listed: ignoring it
changes nothing.
*/}}
{{- define "karpenter.valueWarnings" -}}
{{- $s := .Values.settings | default dict -}}
{{- $ignored := dict
  "eksControlPlane" (list false "the aws provider always discovers the cluster endpoint and CA bundle with DescribeCluster when they are not set")
  "enableZonalShift" (list false "zonal shifts are not followed")
  "disableDryRun" (list false "the aws provider always checks an EC2NodeClass's permissions with DryRun calls")
  "amiRefreshInterval" (list "5m" "the aws provider re-resolves AMIs every 5 minutes")
  "subnetRefreshInterval" (list "1m" "the aws provider re-reads subnets every minute")
-}}
{{- range $key, $spec := $ignored }}
{{- $v := index $s $key }}
{{- if and (include "karpenter.isSet" $v) (ne (toString $v) (toString (first $spec))) }}
- settings.{{ $key }}={{ $v }}: ignored; {{ last $spec }}.
{{- end }}
{{- end }}
{{- with $s.awsFeatureGates }}
{{- range $gate, $v := . }}
{{- if $v }}
- settings.awsFeatureGates.{{ $gate }}={{ $v }}: ignored; no AWS feature gates are implemented.
{{- end }}
{{- end }}
{{- end }}
{{- $providers := include "karpenter.providerSettingEnv" . | fromYaml }}
{{- $name := .Values.cloudProvider.name }}
{{- if has $name (list "kwok" "aws" "azure" "gcp") }}
{{- range $key, $spec := $providers }}
{{- $v := index $s $key }}
{{- $atDefault := and (hasKey $spec "upstreamDefault") (eq (toString $v) (toString $spec.upstreamDefault)) }}
{{- if and (include "karpenter.isSet" $v) (not $atDefault) (not (has $name $spec.providers)) }}
- settings.{{ $key }}: the {{ $name }} provider does not read {{ $spec.env }} (only {{ join ", " $spec.providers }}).
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.logErrorOutputPaths }}
{{- if ne (join "," .) "stderr" }}
- logErrorOutputPaths={{ join "," . }}: ignored; errors are logged with everything else, to logOutputPaths.
{{- end }}
{{- end }}
{{- if (.Values.webhook | default dict).enabled }}
- webhook.enabled=true: ignored; karpenter-core has no conversion or validation webhook (the CRDs validate with CEL).
{{- end }}
{{- if include "karpenter.isSet" .Values.postInstallHook }}
- postInstallHook: ignored; this chart has no post-install hook.
{{- end }}
{{- if hasPrefix "public.ecr.aws/karpenter/" (include "karpenter.image" .) }}
- controller.image: {{ include "karpenter.image" . }} is upstream's Go controller, not karpenter-core: set controller.image (or image) to the image built from this repository's Dockerfile.
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1")) }}
- serviceMonitor.enabled=true: no ServiceMonitor rendered; the cluster does not serve monitoring.coreos.com/v1 (install the Prometheus operator's CRDs).
{{- end }}
{{- end }}
