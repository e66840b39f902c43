// The nn layer in one include: modules, layers, functional ops, initialisers,
// optimizers, gradient clipping, data loading and serialization.
#pragma once

#include "nn/amp/autocast.h"
#include "nn/amp/grad_scaler.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/layers/basic.h"
#include "nn/layers/batch_norm.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/embedding.h"
#include "nn/layers/layer_norm.h"
#include "nn/layers/linear.h"
#include "nn/models/network.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"
#include "nn/utils/clip_grad.h"
