"""The coverage probe's detectors (coverage_probe.py): Ultralytics' YOLO families and
torchvision's detection networks up to their raw head outputs."""
from probe_builders import detector, ultralytics

# Ultralytics' detectors (the common edge deployment), each family's smallest scale. Not here:
# RT-DETR ("rtdetr-l.yaml" exports, two cpu regions), whose raw output with random weights is
# not a comparison at all: its query selection takes the top 300 of near-equal scores, so
# PyTorch's own float32 output moves by 72 of 79 when the input moves by 1e-6 (docs/models.md).
ULTRALYTICS = {
    "yolov5nu": ultralytics("yolov5nu.yaml"),
    "yolov8n": ultralytics("yolov8n.yaml"),
    "yolov8n_seg": ultralytics("yolov8n-seg.yaml"),
    "yolov8n_pose": ultralytics("yolov8n-pose.yaml"),
    "yolov10n": ultralytics("yolov10n.yaml"),
    "yolo11n": ultralytics("yolo11n.yaml"),
}

# torchvision's detectors: SSD and SSDlite at their own sizes; RetinaNet, FCOS and the R-CNNs
# at 512 x 512 (their transform resizes to 800 and more; a deployment fixes a smaller size).
DETECTORS = {
    "ssdlite320_mobilenet_v3": detector("ssdlite320_mobilenet_v3_large", 320),
    "ssd300_vgg16": detector("ssd300_vgg16", 300),
    "retinanet_resnet50_fpn": detector("retinanet_resnet50_fpn", 512),
    "retinanet_resnet50_fpn_v2": detector("retinanet_resnet50_fpn_v2", 512),
    "fcos_resnet50_fpn": detector("fcos_resnet50_fpn", 512),
    "fasterrcnn_mobilenet_v3_rpn": detector("fasterrcnn_mobilenet_v3_large_320_fpn", 320),
    "fasterrcnn_resnet50_fpn_rpn": detector("fasterrcnn_resnet50_fpn", 512),
}
