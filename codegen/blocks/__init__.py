"""The real-time blocks (encoder, estimators, observers, detection, controllers) as CasADi functions
with their C templates, and the pipeline that assembles them."""
