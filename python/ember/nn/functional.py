"""ember.nn.functional: the layer ops as functions, with torch.nn.functional's names and defaults."""
from .._C.nn.functional import (relu, gelu, sigmoid, tanh, softmax, log_softmax, flatten, linear, conv2d,  # noqa: F401
                                max_pool2d, avg_pool2d, dropout, batch_norm, cross_entropy, nll_loss, mse_loss)
