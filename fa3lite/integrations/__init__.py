"""fa3lite inside other libraries. Each integration is its own module, imported on demand, so that
`import fa3lite` needs none of those libraries:

    fa3lite.integrations.transformers   the Hugging Face transformers attention backend "fa3lite"
                                        (register(), then attn_implementation="fa3lite")
"""
