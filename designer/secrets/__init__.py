"""Teams' secrets: values a workflow's bindings use by name (an API key in a header), encrypted at rest, never shown
again after they are saved, and revealed by the worker to the one step that uses them (``runtime.secrets``)."""
