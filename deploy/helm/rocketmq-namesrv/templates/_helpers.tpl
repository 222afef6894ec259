{{/*
Names, labels and the computed configuration of the rocketmq-namesrv chart.
*/}}

{{- define "rmq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's name for its objects; pod names add "-N", controller objects "-controller". */}}
{{- define "rmq.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rmq.controllerName" -}}
{{- printf "%s-controller" (include "rmq.fullname" .) }}
{{- end }}

{{- define "rmq.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "rmq.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels; the caller adds app.kubernetes.io/component. */}}
{{- define "rmq.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rmq.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rmq.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The pods' stable DNS names: <pod>.<headless service>.<namespace>.svc.<cluster domain>. */}}
{{- define "rmq.podHost" -}}
{{- printf "%s-%d.%s-headless.%s.svc.%s" .name .index .name .namespace .domain }}
{{- end }}

{{/* httpNamesrvAddr: every nameserver pod's DNS name and remoting port. */}}
{{- define "rmq.namesrvList" -}}
{{- $name := include "rmq.fullname" . }}
{{- $hosts := list }}
{{- range $i := until (int .Values.nameserver.replicas) }}
{{- $host := include "rmq.podHost" (dict "name" $name "index" $i "namespace" $.Release.Namespace "domain" $.Values.clusterDomain) }}
{{- $hosts = append $hosts (printf "%s:%d" $host (int $.Values.nameserver.port)) }}
{{- end }}
{{- join ";" $hosts }}
{{- end }}

{{/*
controllerDLegerPeers: "<id>-<pod DNS name>:<port>" for every pod of the StatefulSet `.name`,
where the id is the pod's name without its dashes, as rocketmq-operator names its peers and as
the image's runserver.sh derives controllerDLegerSelfId from MY_POD_NAME.
*/}}
{{- define "rmq.controllerPeers" -}}
{{- $peers := list }}
{{- range $i := until (int .replicas) }}
{{- $pod := printf "%s-%d" $.name $i }}
{{- $host := include "rmq.podHost" (dict "name" $.name "index" $i "namespace" $.namespace "domain" $.domain) }}
{{- $peers = append $peers (printf "%s-%s:%d" ($pod | replace "-" "") $host (int $.port)) }}
{{- end }}
{{- join ";" $peers }}
{{- end }}

{{/* The controller group's name. */}}
{{- define "rmq.controllerGroup" -}}
{{- .Values.controller.group | default (printf "%s-controller" (include "rmq.fullname" .)) }}
{{- end }}

{{/* The controller peers of the selected mode (embedded: the nameserver pods). */}}
{{- define "rmq.peers" -}}
{{- if eq .Values.controller.mode "embedded" }}
{{- include "rmq.controllerPeers" (dict "name" (include "rmq.fullname" .) "replicas" .Values.nameserver.replicas "port" .Values.controller.port "namespace" .Release.Namespace "domain" .Values.clusterDomain) }}
{{- else }}
{{- include "rmq.controllerPeers" (dict "name" (include "rmq.controllerName" .) "replicas" .Values.controller.replicas "port" .Values.controller.port "namespace" .Release.Namespace "domain" .Values.clusterDomain) }}
{{- end }}
{{- end }}

{{/*
A properties file from a map: sorted key=value lines. Integral numbers are written as integers
(YAML reads 16777216 as a float); a value with a line break would add keys and is refused.
*/}}
{{- define "rmq.properties" -}}
{{- range $key, $value := . }}
{{- $text := toString $value }}
{{- if and (kindIs "float64" $value) (eq $value (floor $value)) }}
{{- $text = printf "%d" (int64 $value) }}
{{- end }}
{{- if or (contains "\n" $text) (contains "\r" $text) (contains "\n" $key) }}
{{- fail (printf "the value of %s holds a line break" $key) }}
{{- end }}
{{ $key }}={{ $text }}
{{- end }}
{{- end }}

{{/* Keys the chart sets itself; in nameserver.config or controller.config they are an error. */}}
{{- define "rmq.checkOwnedKeys" -}}
{{- range $key := .owned }}
{{- if hasKey $.config $key }}
{{- fail (printf "%s: %s is set by the chart (%s)" $.where $key (index $.hint $key)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The nameserver's namesrv.properties, as a map. */}}
{{- define "rmq.namesrvConfig" -}}
{{- $v := .Values }}
{{- $hint := dict "listenPort" "nameserver.port" "httpListenPort" "nameserver.httpPort" "kvConfigPath" "on the data volume" "routeSnapshotPath" "beside kvConfigPath" "tls.server.certPath" "tls.*" "tls.server.keyPath" "tls.*" "tls.server.trustCertPath" "tls.*" "authConfigPath" "accessControl.*" "authenticationEnabled" "accessControl.enabled" "enableControllerInNamesrv" "controller.mode" }}
{{- include "rmq.checkOwnedKeys" (dict "config" $v.nameserver.config "owned" (keys $hint | sortAlpha) "hint" $hint "where" "nameserver.config") }}
{{- $c := dict "listenPort" $v.nameserver.port "httpListenPort" $v.nameserver.httpPort "kvConfigPath" "/home/rocketmq/store/namesrv/kvConfig.json" "enableShutdownGracefully" $v.nameserver.gracefulShutdown.enabled "shutdownWaitTimeSeconds" $v.nameserver.gracefulShutdown.waitSeconds }}
{{- if $v.nameserver.addressServer.enabled }}
{{- $_ := set $c "httpNamesrvAddr" (include "rmq.namesrvList" .) }}
{{- end }}
{{- if $v.tls.enabled }}
{{- $_ := set $c "tls.server.mode" $v.tls.mode }}
{{- $_ := set $c "tls.test.mode.enable" false }}
{{- $_ := set $c "tls.server.certPath" "/etc/rocketmq/tls/tls.crt" }}
{{- $_ := set $c "tls.server.keyPath" "/etc/rocketmq/tls/tls.key" }}
{{- $_ := set $c "tls.server.need.client.auth" $v.tls.clientAuth }}
{{- $_ := set $c "tls.server.authClient" $v.tls.authClient }}
{{- if $v.tls.authClient }}
{{- $_ := set $c "tls.server.trustCertPath" "/etc/rocketmq/tls/ca.crt" }}
{{- end }}
{{- end }}
{{- if $v.accessControl.enabled }}
{{- $_ := set $c "authenticationEnabled" true }}
{{- $_ := set $c "authenticationMode" $v.accessControl.mode }}
{{- $_ := set $c "authConfigPath" "/etc/rocketmq/auth/auth.yml" }}
{{- end }}
{{- if eq $v.controller.mode "embedded" }}
{{- $_ := set $c "enableControllerInNamesrv" true }}
{{- end }}
{{- toYaml (merge (deepCopy $v.nameserver.config) $c) }}
{{- end }}

{{/* The standalone controller's controller.properties, as a map (group, peers, store and id
come from the environment, as rocketmq-operator passes them). */}}
{{- define "rmq.controllerConfig" -}}
{{- $v := .Values }}
{{- $hint := dict "controllerDLegerGroup" "controller.group" "controllerDLegerPeers" "controller.replicas" "controllerDLegerSelfId" "the pod name" "controllerStorePath" "on the data volume" "httpListenPort" "controller.httpPort" }}
{{- include "rmq.checkOwnedKeys" (dict "config" $v.controller.config "owned" (keys $hint | sortAlpha) "hint" $hint "where" "controller.config") }}
{{- toYaml (merge (deepCopy $v.controller.config) (dict "httpListenPort" $v.controller.httpPort)) }}
{{- end }}

{{/* The environment that names a controller node, as rocketmq-operator sets it. */}}
{{- define "rmq.controllerEnv" -}}
- name: MY_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: controllerDLegerGroup
  value: {{ include "rmq.controllerGroup" . | quote }}
- name: controllerDLegerPeers
  value: {{ include "rmq.peers" . | quote }}
- name: controllerStorePath
  value: /home/rocketmq/store/controller
{{- end }}

{{/* The accounts file (auth.yml) from accessControl.accounts. */}}
{{- define "rmq.accountsFile" -}}
{{- $file := dict "accounts" .Values.accessControl.accounts }}
{{- with .Values.accessControl.globalWhiteRemoteAddresses }}
{{- $_ := set $file "globalWhiteRemoteAddresses" . }}
{{- end }}
{{- toYaml $file }}
{{- end }}

{{/* Annotations that roll the pods when the configuration or a chart-made Secret changes. */}}
{{- define "rmq.checksums" -}}
checksum/config: {{ include "rmq.namesrvConfig" . | sha256sum }}
{{- if or (and .Values.tls.enabled (not .Values.tls.existingSecret)) (and .Values.accessControl.enabled (not .Values.accessControl.existingSecret)) }}
checksum/secrets: {{ include (print .Template.BasePath "/secrets.yaml") . | sha256sum }}
{{- end }}
{{- end }}
