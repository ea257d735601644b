{{- /* The upstream chart's templates/rdma-shared-dp/rdma-shared-dp.yaml without its label helpers (named .tpl here: Helm renders
     every file of templates/, and yamllint cannot read template syntax). */ -}}
{{- if .Values.rdma.rdmaSharedDevicePlugin.install -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.rdma.rdmaSharedDevicePlugin.name | trunc 63 | trimSuffix "-" }}
  namespace: {{ .Release.Namespace | quote }}
data:
  config.json: |
    {
        "periodicUpdateInterval": {{ .Values.rdma.rdmaSharedDevicePlugin.deviceConfig.periodicUpdateInterval }},
        {{- if .Values.rdma.rdmaSharedDevicePlugin.deviceConfig.configList }}
        {{- with .Values.rdma.rdmaSharedDevicePlugin.deviceConfig.configList }}
        "configList":
        {{- toPrettyJson . | trim | nindent 10 }}
        {{- end }}
        {{- else }}
        "configList": []
        {{- end }}
    }
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Values.rdma.rdmaSharedDevicePlugin.name | trunc 63 | trimSuffix "-" }}
  namespace: {{ .Release.Namespace | quote }}
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Values.rdma.rdmaSharedDevicePlugin.name }}
  {{- with .Values.rdma.rdmaSharedDevicePlugin.updateStrategy }}
  updateStrategy:
    {{- toYaml . | trim | nindent 4 }}
  {{- end }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Values.rdma.rdmaSharedDevicePlugin.name }}
    spec:
      hostNetwork: true
      {{- with .Values.rdma.rdmaSharedDevicePlugin.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .Values.rdma.rdmaSharedDevicePlugin.name | trunc 63 | trimSuffix "-" }}
          image: "{{ .Values.rdma.rdmaSharedDevicePlugin.image.registry }}/{{ .Values.rdma.rdmaSharedDevicePlugin.image.repository }}:{{ .Values.rdma.rdmaSharedDevicePlugin.image.tag }}"
          securityContext:
            privileged: true
          volumeMounts:
            - name: config
              mountPath: /k8s-rdma-shared-dev-plugin
      volumes:
        - name: config
          configMap:
            name: {{ .Values.rdma.rdmaSharedDevicePlugin.name | trunc 63 | trimSuffix "-" }}
            items:
              - key: config.json
                path: config.json
{{- end }}
